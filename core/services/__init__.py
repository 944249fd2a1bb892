"""What people do, as typed inputs and typed views; the CLI, API and dashboard call only these."""
