# The console's files (GET /ui/), embedded in the ember binary as the in-guest runtime is: `ld -r
# -b binary` makes one object of the files as they are, with a start and an end symbol each
# (srv_console.c). Chart.js is Debian's libjs-chart.js (scripts/setup.sh), copied at build time.
CHART_JS      ?= /usr/share/javascript/chart.js/chart.min.js
CONSOLE_FILES := index.html console.css console.js console_function.js console_forms.js
$(B)/console/chart.min.js: $(wildcard $(CHART_JS))
	@mkdir -p $(dir $@)
	@[ -r $(CHART_JS) ] || { echo "missing $(CHART_JS) (Debian's libjs-chart.js): run 'make setup' (scripts/setup.sh)" >&2; exit 1; }
	cp $(CHART_JS) $@
$(B)/console/%: src/server/console/%
	@mkdir -p $(dir $@)
	cp $< $@
$(B)/console/console_blob.o: $(CONSOLE_FILES:%=$(B)/console/%) $(B)/console/chart.min.js
	cd $(B)/console && ld -r -z noexecstack -b binary -o console_blob.o $(CONSOLE_FILES) chart.min.js
SRV_OBJ += $(B)/console/console_blob.o
