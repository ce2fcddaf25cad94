// index-js: a function with a large heap: at init it builds an in-memory catalogue of 40,000
// records (several MiB of Duktape heap, part of the snapshot); each request ("min=N") walks all
// of it and answers how many records score at least N, the sum of their ids and the first name.
'use strict';

var records = [];
(function build() {
	var seed = 12345;
	for (var i = 0; i < 40000; i++) {
		seed = (seed * 1103515245 + 12345) % 2147483648;
		records.push({ id: i, name: 'item-' + i + '-' + (seed % 9973), score: seed % 1000,
			tags: ['t' + (seed % 7), 't' + (seed % 11)] });
	}
})();

function handler(input) {
	var m = /min=(\d+)/.exec(input), min = m ? parseInt(m[1], 10) : 500;
	var count = 0, sum = 0, first = null;
	for (var i = 0; i < records.length; i++) {
		var r = records[i];
		if (r.score >= min && r.tags.length === 2) {
			count++;
			sum += r.id;
			if (first === null)
				first = r.name;
		}
	}
	return 'records ' + records.length + ', score >= ' + min + ': ' + count + ', ids sum ' + sum +
		', first ' + first + '\n';
}
