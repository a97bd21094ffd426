"""What an agent backend imports: MemoryClient (memory_client), the search_facts tool (tools) and
memory management (management)."""
