"""herald: core."""
