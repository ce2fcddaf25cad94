# `make bench`: the headline comparisons, each measured side by side in one run.
.PHONY: bench
bench: setup all
	./bench/run_vs_native.sh
	./$(B)/ember bench latency --backend $${EMBER_BACKEND:-auto}
