"""perfmodel.features."""
