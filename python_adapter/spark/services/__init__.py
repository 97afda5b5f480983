"""The table services: clustering, compaction, rollback, restore, clean, repair, and the description of a table's files."""
