"""perfmodel.figures."""
