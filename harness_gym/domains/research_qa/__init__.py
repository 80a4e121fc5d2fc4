"""Research QA: multi-hop questions over the encyclopedia of a generated fictional world."""
