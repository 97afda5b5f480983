"""The write path: a model's rows written sized, upserted, staged and committed."""
