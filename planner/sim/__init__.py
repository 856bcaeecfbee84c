"""The flow simulator: fabric graph, traffic, routing, max-min rates, failures."""
