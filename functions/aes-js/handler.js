// aes-js: AES-128-CTR over the request payload for N rounds, like FunctionBench's pyaes; it
// answers exactly what the C function aes answers (the payload is read as UTF-8 text).
'use strict';

// key and initial counter block of NIST SP 800-38A F.5.1 (so round 1 is a known test vector)
var KEY = [0x2b, 0x7e, 0x15, 0x16, 0x28, 0xae, 0xd2, 0xa6, 0xab, 0xf7, 0x15, 0x88, 0x09, 0xcf, 0x4f, 0x3c];
var IV = [0xf0, 0xf1, 0xf2, 0xf3, 0xf4, 0xf5, 0xf6, 0xf7, 0xf8, 0xf9, 0xfa, 0xfb, 0xfc, 0xfd, 0xfe, 0xff];

var SBOX = new Uint8Array(256);
var TE = [new Uint32Array(256), new Uint32Array(256), new Uint32Array(256), new Uint32Array(256)];
var RK = new Uint32Array(44);

function xtime(x) {
	return ((x << 1) ^ (x & 0x80 ? 0x1b : 0)) & 255;
}

function rotl8(x, n) {
	return ((x << n) | (x >>> (8 - n))) & 255;
}

// The S-box and round tables from GF(2^8) arithmetic, and the expanded key: built once, before
// the snapshot.
(function setup() {
	var p = 1, q = 1, i, t;
	do {
		p ^= xtime(p);
		q = (q ^ (q << 1)) & 255;
		q = (q ^ (q << 2)) & 255;
		q = (q ^ (q << 4)) & 255;
		q ^= q & 0x80 ? 0x09 : 0;
		SBOX[p] = q ^ rotl8(q, 1) ^ rotl8(q, 2) ^ rotl8(q, 3) ^ rotl8(q, 4) ^ 0x63;
	} while (p !== 1);
	SBOX[0] = 0x63;
	for (i = 0; i < 256; i++) {
		var s = SBOX[i], s2 = xtime(s);
		TE[0][i] = (s2 << 24) | (s << 16) | (s << 8) | (s2 ^ s);
		for (t = 1; t < 4; t++)
			TE[t][i] = (TE[t - 1][i] >>> 8) | (TE[t - 1][i] << 24);
	}
	for (i = 0; i < 4; i++)
		RK[i] = (KEY[4 * i] << 24) | (KEY[4 * i + 1] << 16) | (KEY[4 * i + 2] << 8) | KEY[4 * i + 3];
	var rcon = 1;
	for (i = 4; i < 44; i++) {
		t = RK[i - 1];
		if (i % 4 === 0) {
			t = (SBOX[(t >>> 16) & 255] << 24) | (SBOX[(t >>> 8) & 255] << 16) |
			    (SBOX[t & 255] << 8) | SBOX[t >>> 24];
			t ^= rcon << 24;
			rcon = xtime(rcon);
		}
		RK[i] = RK[i - 4] ^ t;
	}
})();

function encryptBlock(inp, out) {
	var T0 = TE[0], T1 = TE[1], T2 = TE[2], T3 = TE[3];
	var s0 = ((inp[0] << 24) | (inp[1] << 16) | (inp[2] << 8) | inp[3]) ^ RK[0];
	var s1 = ((inp[4] << 24) | (inp[5] << 16) | (inp[6] << 8) | inp[7]) ^ RK[1];
	var s2 = ((inp[8] << 24) | (inp[9] << 16) | (inp[10] << 8) | inp[11]) ^ RK[2];
	var s3 = ((inp[12] << 24) | (inp[13] << 16) | (inp[14] << 8) | inp[15]) ^ RK[3];
	for (var r = 4; r < 40; r += 4) {
		var t0 = T0[s0 >>> 24] ^ T1[(s1 >>> 16) & 255] ^ T2[(s2 >>> 8) & 255] ^ T3[s3 & 255] ^ RK[r];
		var t1 = T0[s1 >>> 24] ^ T1[(s2 >>> 16) & 255] ^ T2[(s3 >>> 8) & 255] ^ T3[s0 & 255] ^ RK[r + 1];
		var t2 = T0[s2 >>> 24] ^ T1[(s3 >>> 16) & 255] ^ T2[(s0 >>> 8) & 255] ^ T3[s1 & 255] ^ RK[r + 2];
		var t3 = T0[s3 >>> 24] ^ T1[(s0 >>> 16) & 255] ^ T2[(s1 >>> 8) & 255] ^ T3[s2 & 255] ^ RK[r + 3];
		s0 = t0; s1 = t1; s2 = t2; s3 = t3;
	}
	var s = [s0, s1, s2, s3];
	for (var i = 0; i < 4; i++) {
		var w = ((SBOX[s[i] >>> 24] << 24) | (SBOX[(s[(i + 1) % 4] >>> 16) & 255] << 16) |
			 (SBOX[(s[(i + 2) % 4] >>> 8) & 255] << 8) | SBOX[s[(i + 3) % 4] & 255]) ^ RK[40 + i];
		out[4 * i] = w >>> 24;
		out[4 * i + 1] = (w >>> 16) & 255;
		out[4 * i + 2] = (w >>> 8) & 255;
		out[4 * i + 3] = w & 255;
	}
}

// Round r (from 0) uses the counter blocks iv + r * 2^64 + i, i = 0, 1, ... (mod 2^128).
function ctrRound(buf, r) {
	var ctr = new Uint8Array(IV), ks = new Uint8Array(16), b, carry = r;
	for (b = 7; b >= 0 && carry > 0; b--) {
		var sum = ctr[b] + carry;
		ctr[b] = sum % 256;
		carry = Math.floor(sum / 256);
	}
	for (var off = 0; off < buf.length; off += 16) {
		encryptBlock(ctr, ks);
		var end = Math.min(16, buf.length - off);
		for (var i = 0; i < end; i++)
			buf[off + i] ^= ks[i];
		for (b = 15; b >= 0 && ++ctr[b] === 256; b--)
			ctr[b] = 0;
	}
}

var K = [
	0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
	0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
	0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
	0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
	0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
	0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
	0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
	0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2
];

function ror(x, n) {
	return (x >>> n) | (x << (32 - n));
}

// SHA-256 of a byte array, as lowercase hex
function sha256(bytes) {
	var n = bytes.length, total = (n + 72) & ~63, i, j;
	var m = new Uint8Array(total), w = new Int32Array(64);
	m.set(bytes);
	m[n] = 0x80;
	var hi = Math.floor(n / 0x20000000), lo = (n * 8) >>> 0;
	for (i = 0; i < 4; i++) {
		m[total - 8 + i] = (hi >>> (24 - 8 * i)) & 255;
		m[total - 4 + i] = (lo >>> (24 - 8 * i)) & 255;
	}
	var h = [0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19];
	for (var off = 0; off < total; off += 64) {
		for (i = 0; i < 16; i++)
			w[i] = (m[off + 4 * i] << 24) | (m[off + 4 * i + 1] << 16) | (m[off + 4 * i + 2] << 8) | m[off + 4 * i + 3];
		for (i = 16; i < 64; i++) {
			var s0 = ror(w[i - 15], 7) ^ ror(w[i - 15], 18) ^ (w[i - 15] >>> 3);
			var s1 = ror(w[i - 2], 17) ^ ror(w[i - 2], 19) ^ (w[i - 2] >>> 10);
			w[i] = (w[i - 16] + s0 + w[i - 7] + s1) | 0;
		}
		var v = h.slice();
		for (i = 0; i < 64; i++) {
			var t1 = (v[7] + (ror(v[4], 6) ^ ror(v[4], 11) ^ ror(v[4], 25)) +
				  ((v[4] & v[5]) ^ (~v[4] & v[6])) + K[i] + w[i]) | 0;
			var t2 = ((ror(v[0], 2) ^ ror(v[0], 13) ^ ror(v[0], 22)) +
				  ((v[0] & v[1]) ^ (v[0] & v[2]) ^ (v[1] & v[2]))) | 0;
			for (j = 7; j > 0; j--)
				v[j] = v[j - 1];
			v[4] = (v[4] + t1) | 0;
			v[0] = (t1 + t2) | 0;
		}
		for (i = 0; i < 8; i++)
			h[i] = (h[i] + v[i]) | 0;
	}
	return hex(h.map(function (x) { return [x >>> 24, (x >>> 16) & 255, (x >>> 8) & 255, x & 255]; })
		    .reduce(function (a, b) { return a.concat(b); }, []));
}

function hex(bytes) {
	var s = '';
	for (var i = 0; i < bytes.length; i++)
		s += (bytes[i] < 16 ? '0' : '') + bytes[i].toString(16);
	return s;
}

function handler(input) {
	var nl = input.indexOf('\n');
	var first = nl < 0 ? input : input.substring(0, nl);
	var m = /^rounds=([0-9]+)\r?$/.exec(first);
	var rounds = m ? parseInt(m[1], 10) : 0;
	if (!(rounds >= 1 && rounds <= 1000000))
		throw new Error('the first line must be rounds=N with 1 <= N <= 1000000');
	var data;
	try {
		data = new TextEncoder().encode(nl < 0 ? '' : input.substring(nl + 1));
	} catch (e) {
		throw new Error('the payload must be valid UTF-8 text');
	}
	for (var r = 0; r < rounds; r++)
		ctrRound(data, r);
	if (data.length <= 64)
		return hex(data) + '\n';
	return 'len=' + data.length + ' sha256=' + sha256(data) + '\n';
}
