"""Topic generation: sample D0 from the document store, turn it into NT topics and qrels."""
