'use strict';
const test = require('node:test');
const assert = require('node:assert');
const { clamp } = require('../src/clamp.js');
test('above falls', () => assert.strictEqual(clamp(9, 1, 5), 5));
test('at high', () => assert.strictEqual(clamp(5, 1, 5), 5));
