"""herald: adapters."""
