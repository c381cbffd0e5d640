package export

import "encoding/json"

// A mirror of eksctl's ClusterConfig (github.com/weaveworks/eksctl, now
// eksctl-io/eksctl, pkg/apis/eksctl.io/v1alpha5 types.go), for parsing the
// EKS export strictly. The upstream module cannot be added: the Go module
// proxy refuses it, and it would pull in the AWS SDK besides. The field
// names and JSON tags are upstream's; parts berth never writes are kept as
// json.RawMessage so that a field of that name is known but not
// inspected. The two embedded types are exported because encoding/json
// cannot fill an embedded pointer to an unexported struct.

type eksctlClusterConfig struct {
	APIVersion              string                    `json:"apiVersion"`
	Kind                    string                    `json:"kind"`
	Metadata                *eksctlClusterMeta        `json:"metadata"`
	KubernetesNetworkConfig json.RawMessage           `json:"kubernetesNetworkConfig,omitempty"`
	AutoModeConfig          json.RawMessage           `json:"autoModeConfig,omitempty"`
	RemoteNetworkConfig     json.RawMessage           `json:"remoteNetworkConfig,omitempty"`
	IAM                     json.RawMessage           `json:"iam,omitempty"`
	IAMIdentityMappings     json.RawMessage           `json:"iamIdentityMappings,omitempty"`
	IdentityProviders       json.RawMessage           `json:"identityProviders,omitempty"`
	AccessConfig            json.RawMessage           `json:"accessConfig,omitempty"`
	VPC                     json.RawMessage           `json:"vpc,omitempty"`
	Addons                  json.RawMessage           `json:"addons,omitempty"`
	AddonsConfig            json.RawMessage           `json:"addonsConfig,omitempty"`
	PrivateCluster          json.RawMessage           `json:"privateCluster,omitempty"`
	NodeGroups              json.RawMessage           `json:"nodeGroups,omitempty"`
	ManagedNodeGroups       []*eksctlManagedNodeGroup `json:"managedNodeGroups,omitempty"`
	FargateProfiles         json.RawMessage           `json:"fargateProfiles,omitempty"`
	AvailabilityZones       []string                  `json:"availabilityZones,omitempty"`
	LocalZones              []string                  `json:"localZones,omitempty"`
	CloudWatch              json.RawMessage           `json:"cloudWatch,omitempty"`
	SecretsEncryption       json.RawMessage           `json:"secretsEncryption,omitempty"`
	Karpenter               json.RawMessage           `json:"karpenter,omitempty"`
	Outpost                 json.RawMessage           `json:"outpost,omitempty"`
	ZonalShiftConfig        json.RawMessage           `json:"zonalShiftConfig,omitempty"`
	DeprecatedGitOps        json.RawMessage           `json:"gitops,omitempty"`
}

type eksctlClusterMeta struct {
	Name               string            `json:"name"`
	Region             string            `json:"region"`
	Version            string            `json:"version,omitempty"`
	ForceUpdateVersion *bool             `json:"forceUpdateVersion,omitempty"`
	Tags               map[string]string `json:"tags,omitempty"`
	Annotations        map[string]string `json:"annotations,omitempty"`
}

// ScalingConfig is inlined in NodeGroupBase upstream.
type ScalingConfig struct {
	DesiredCapacity *int `json:"desiredCapacity,omitempty"`
	MinSize         *int `json:"minSize,omitempty"`
	MaxSize         *int `json:"maxSize,omitempty"`
}

type NodeGroupBase struct {
	Name              string   `json:"name"`
	AMIFamily         string   `json:"amiFamily,omitempty"`
	InstanceType      string   `json:"instanceType,omitempty"`
	AvailabilityZones []string `json:"availabilityZones,omitempty"`
	Subnets           []string `json:"subnets,omitempty"`
	InstancePrefix    string   `json:"instancePrefix,omitempty"`
	InstanceName      string   `json:"instanceName,omitempty"`
	*ScalingConfig
	VolumeSize                *int                `json:"volumeSize,omitempty"`
	SSH                       json.RawMessage     `json:"ssh,omitempty"`
	Labels                    map[string]string   `json:"labels,omitempty"`
	PrivateNetworking         bool                `json:"privateNetworking"`
	Tags                      map[string]string   `json:"tags,omitempty"`
	IAM                       *eksctlNodeGroupIAM `json:"iam,omitempty"`
	AMI                       string              `json:"ami,omitempty"`
	SecurityGroups            json.RawMessage     `json:"securityGroups,omitempty"`
	MaxPodsPerNode            int                 `json:"maxPodsPerNode,omitempty"`
	ASGSuspendProcesses       []string            `json:"asgSuspendProcesses,omitempty"`
	EBSOptimized              *bool               `json:"ebsOptimized,omitempty"`
	VolumeType                *string             `json:"volumeType,omitempty"`
	VolumeName                *string             `json:"volumeName,omitempty"`
	VolumeEncrypted           *bool               `json:"volumeEncrypted,omitempty"`
	VolumeKmsKeyID            *string             `json:"volumeKmsKeyID,omitempty"`
	VolumeIOPS                *int                `json:"volumeIOPS,omitempty"`
	VolumeThroughput          *int                `json:"volumeThroughput,omitempty"`
	AdditionalVolumes         json.RawMessage     `json:"additionalVolumes,omitempty"`
	PreBootstrapCommands      []string            `json:"preBootstrapCommands,omitempty"`
	OverrideBootstrapCommand  *string             `json:"overrideBootstrapCommand,omitempty"`
	PropagateASGTags          *bool               `json:"propagateASGTags,omitempty"`
	DisableIMDSv1             *bool               `json:"disableIMDSv1,omitempty"`
	DisablePodIMDS            *bool               `json:"disablePodIMDS,omitempty"`
	Placement                 json.RawMessage     `json:"placement,omitempty"`
	EFAEnabled                *bool               `json:"efaEnabled,omitempty"`
	InstanceSelector          json.RawMessage     `json:"instanceSelector,omitempty"`
	AdditionalEncryptedVolume string              `json:"additionalEncryptedVolume,omitempty"`
	Bottlerocket              json.RawMessage     `json:"bottlerocket,omitempty"`
	EnableDetailedMonitoring  *bool               `json:"enableDetailedMonitoring,omitempty"`
	CapacityReservation       json.RawMessage     `json:"capacityReservation,omitempty"`
	InstanceMarketOptions     json.RawMessage     `json:"instanceMarketOptions,omitempty"`
	OutpostARN                string              `json:"outpostARN,omitempty"`
}

type eksctlManagedNodeGroup struct {
	*NodeGroupBase
	InstanceTypes    []string               `json:"instanceTypes,omitempty"`
	Spot             bool                   `json:"spot,omitempty"`
	Taints           []eksctlNodeGroupTaint `json:"taints,omitempty"`
	UpdateConfig     json.RawMessage        `json:"updateConfig,omitempty"`
	LaunchTemplate   json.RawMessage        `json:"launchTemplate,omitempty"`
	ReleaseVersion   string                 `json:"releaseVersion,omitempty"`
	NodeRepairConfig json.RawMessage        `json:"nodeRepairConfig,omitempty"`
}

type eksctlNodeGroupTaint struct {
	Key    string `json:"key,omitempty"`
	Value  string `json:"value,omitempty"`
	Effect string `json:"effect,omitempty"`
}

type eksctlNodeGroupIAM struct {
	AttachPolicy                    json.RawMessage              `json:"attachPolicy,omitempty"`
	AttachPolicyARNs                []string                     `json:"attachPolicyARNs,omitempty"`
	InstanceProfileARN              string                       `json:"instanceProfileARN,omitempty"`
	InstanceRoleARN                 string                       `json:"instanceRoleARN,omitempty"`
	InstanceRoleName                string                       `json:"instanceRoleName,omitempty"`
	InstanceRolePermissionsBoundary string                       `json:"instanceRolePermissionsBoundary,omitempty"`
	WithAddonPolicies               eksctlNodeGroupAddonPolicies `json:"withAddonPolicies,omitempty"`
}

type eksctlNodeGroupAddonPolicies struct {
	Image                     *bool `json:"imageBuilder"`
	AutoScaler                *bool `json:"autoScaler"`
	ExternalDNS               *bool `json:"externalDNS"`
	CertManager               *bool `json:"certManager"`
	AppMesh                   *bool `json:"appMesh"`
	AppMeshPreview            *bool `json:"appMeshPreview"`
	EBS                       *bool `json:"ebs"`
	FSX                       *bool `json:"fsx"`
	EFS                       *bool `json:"efs"`
	AWSLoadBalancerController *bool `json:"awsLoadBalancerController"`
	DeprecatedALBIngress      *bool `json:"albIngress"`
	XRay                      *bool `json:"xRay"`
	CloudWatch                *bool `json:"cloudWatch"`
}

// eksctlAMIFamilies are the amiFamily values eksctl accepts for managed
// node groups (NodeImageFamily* upstream).
var eksctlAMIFamilies = map[string]bool{
	"AmazonLinux2023": true, "AmazonLinux2": true, "Bottlerocket": true,
	"Ubuntu2004": true, "UbuntuPro2004": true, "Ubuntu2204": true, "UbuntuPro2204": true, "Ubuntu2404": true, "UbuntuPro2404": true,
	"WindowsServer2019CoreContainer": true, "WindowsServer2019FullContainer": true,
	"WindowsServer2022CoreContainer": true, "WindowsServer2022FullContainer": true,
}
