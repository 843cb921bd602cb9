"""INFINI Loadgen compatibility: $[[variables]] templates, YAML configs, `bench loadgen`."""
