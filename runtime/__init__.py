"""What a running mnemos process wires together: Temporal connection, data conversion, servers."""
