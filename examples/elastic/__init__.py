"""examples/elastic as a package, so tests import it as elastic.train (examples/ddp is train)."""
