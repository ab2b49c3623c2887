"""Reusable readers/writers for the field's file formats (TREC topics, qrels, runs)."""
