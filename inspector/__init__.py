"""The inspector: one summary with every metric's explanation, score and the labels of the studies that judged
it, and two summaries compared side by side. No models of its own."""
