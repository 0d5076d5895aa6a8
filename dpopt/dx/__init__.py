"""d_X-privacy for linear queries (Perrier, Asghar & Kaafar): metrics, sensitivity, noise scales."""
