"""The SQL the SQLite and PostgreSQL backends share, written once.

Both databases speak the same SQL for every table but the domain records' (facts, reflections,
blobs: columns in SQLite, JSONB bodies in PostgreSQL) and search (FTS5 and a vector cache,
tsvector and HNSW). What differs below that is the connection's dialect and codec (``db.Db``):
parameter style, how a list is bound, how timestamps, JSON and vectors are stored, which column
holds insertion order. Each backend keeps its connection, transactions, schema and search."""
