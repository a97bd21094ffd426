"""The SQL the SQLite and PostgreSQL backends share, written once.

Both databases speak the same SQL for every table and every planned write; the domain records
(facts, reflections, blobs: columns in SQLite, JSONB bodies in PostgreSQL) differ only in the
columns each dialect gives (``db.Db.fact_row``, ``reflection_columns``, ``consolidated_columns``).
What differs below that is the connection's dialect and codec (``db.Db``): parameter style, how a
list is bound, how timestamps, JSON and vectors are stored, which column holds insertion order.
Each backend keeps its connection and transactions (``db.Transactions``), its schema, its search
and the few writes of its own (access counts, a re-embed's swap, its index upkeep).

``store`` and ``manage`` answer the store calls, ``reads`` and ``lifecycle_reads`` the planners'
snapshots, ``writes`` their writes; ``sessions`` and ``facts`` hold the SQL they share."""
