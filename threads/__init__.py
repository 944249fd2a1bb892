"""herald: threads."""
