"""perfmodel.models."""
