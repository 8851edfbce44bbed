"""Running a tickwork node inside an application (docs/embedding.md); each example is tested."""
