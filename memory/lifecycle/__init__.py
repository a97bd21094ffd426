"""Data lifecycle: memories in from other systems (Eden, mem0, a mnemos export) and out again.

Everything here is pure mapping into typed import records; the writes are the store's
(see README.md in this folder for the store methods they need)."""
