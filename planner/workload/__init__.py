"""Training workloads: documented model presets and the traffic of one iteration."""
