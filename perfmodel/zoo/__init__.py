"""perfmodel.zoo."""
