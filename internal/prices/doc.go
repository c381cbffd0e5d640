// Package prices is what a node-hour of each pool costs: berth's price
// table (prices.csv: list prices of the three clouds' common CPU and GPU
// types, each row with its source and date, written down and never
// fetched), a table of one's own that replaces its rows (Load), and the
// price of each pool of a blueprint (Price): the blueprint's
// pools[].price, else the table's row for the pool's instance type, or
// the type `berth export` gives it on a cloud. A pool with no price says
// so and how to give one; nothing counts it as $0.
//
// Karpenter's cloud provider prices its instance types from it, and the
// rehearsal's cost (internal/rehearse/cost) its node-hours.
package prices
