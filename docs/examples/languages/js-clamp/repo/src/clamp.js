'use strict';
// clamp(value, low, high): value limited to [low, high].
function clamp(value, low, high) {
  if (low > high) throw new RangeError('low > high');
  if (value < low) return low;
  if (value >= high) return value;
  return value;
}
module.exports = { clamp };
