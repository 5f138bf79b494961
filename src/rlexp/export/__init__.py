"""`rlexp export`: a saved agent as ONNX and TorchScript files that do what it does, proven on its episodes."""
