'use strict';
const test = require('node:test');
const assert = require('node:assert');
const { clamp } = require('../src/clamp.js');
test('inside stays', () => assert.strictEqual(clamp(3, 1, 5), 3));
test('below rises', () => assert.strictEqual(clamp(-2, 1, 5), 1));
test('bad range', () => assert.throws(() => clamp(1, 5, 1), RangeError));
