// json: parses a JSON request, sorts every object's keys, adds to each object with numeric fields
// a computed "_total" (their sum), and answers the compact JSON of {"data": ..., "stats": ...}.
'use strict';

function transform(value, depth, stats) {
	stats.maxDepth = Math.max(stats.maxDepth, depth);
	if (Array.isArray(value)) {
		stats.arrays++;
		return value.map(function (v) { return transform(v, depth + 1, stats); });
	}
	if (value === null || typeof value !== 'object') {
		if (typeof value === 'number') {
			stats.numbers++;
			stats.sum += value;
		} else if (typeof value === 'string') {
			stats.strings++;
			stats.chars += value.length;
		}
		return value;
	}
	stats.objects++;
	var keys = Object.keys(value).sort(), fields = {}, total = 0, numeric = 0;
	for (var i = 0; i < keys.length; i++) {
		var v = value[keys[i]];
		if (typeof v === 'number') {
			total += v;
			numeric++;
		}
		fields[keys[i]] = transform(v, depth + 1, stats);
	}
	stats.keys += keys.length;
	if (numeric > 0 && !Object.prototype.hasOwnProperty.call(fields, '_total')) {
		fields._total = total;
		keys.push('_total');
		keys.sort();
	}
	var out = {};
	keys.forEach(function (k) { out[k] = fields[k]; });
	return out;
}

function handler(input) {
	var stats = { objects: 0, arrays: 0, keys: 0, numbers: 0, sum: 0, strings: 0, chars: 0, maxDepth: 0 };
	var data = transform(JSON.parse(input), 0, stats);
	return JSON.stringify({ data: data, stats: stats }) + '\n';
}
