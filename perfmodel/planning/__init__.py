"""perfmodel.planning."""
