"""HTTP serving: the API and the OpenAI-compatible endpoint (top layer, beside cli/)."""
