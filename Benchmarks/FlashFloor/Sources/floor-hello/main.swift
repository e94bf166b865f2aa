print("MediaRoute flash floor")
