"""perfmodel.diagnostics."""
