"""Sessions: the model, storage, export, fork and what-if re-routing."""
