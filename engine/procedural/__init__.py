"""Procedurally generated content: the mannequin character and its clips."""
