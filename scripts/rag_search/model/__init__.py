"""The embedding model, found on disk and never downloaded, and its ONNX export."""
