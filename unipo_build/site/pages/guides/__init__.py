"""The guides' and reference pages' computed parts."""
