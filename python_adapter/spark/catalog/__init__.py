"""The metastore side of a table: its record, its definitions, its partitions and their statistics."""
