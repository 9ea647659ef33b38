"""From documents to a published index: the indexing pipeline, one reconcile step for every source, and an index run's
life (open, write, publish).
"""
