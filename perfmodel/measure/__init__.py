"""perfmodel.measure."""
