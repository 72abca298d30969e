package agent

// OnlineConfigs is the TopicConfigSource of a guard connected to its
// cluster: the topic configs Configs fetched, with the tiered partitions'
// remote offsets from Tiered (spec R1.7) and the log dirs the broker
// reports offline from Offline (the enforcer reads them with its identity
// evidence; a nil Offline adds none).
type OnlineConfigs struct {
	Configs *ConfigRefresher
	Tiered  *TieredRefresher
	Offline func() map[string]string
}

// Current is the ConfigSet in force now.
func (o OnlineConfigs) Current() ConfigSet {
	cs := o.Configs.Current()
	cs.Remote, cs.RemoteTime = o.Tiered.Current()
	if o.Offline != nil {
		cs.OfflineLogDirs = o.Offline()
	}
	return cs
}
