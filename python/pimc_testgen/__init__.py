"""pimc test-data generators (seeded HF checkpoints, golden outputs, malformed inputs)."""
