"""Engines and column types, models, schema and its migrations."""
