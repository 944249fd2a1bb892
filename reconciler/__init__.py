"""herald: reconciler."""
