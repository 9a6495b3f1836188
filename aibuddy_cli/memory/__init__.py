"""User memory: records, the derived index, the recall manifest, recall and the service."""
