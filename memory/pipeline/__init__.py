"""The formation use cases, one function per step. Activities call these and nothing else."""
