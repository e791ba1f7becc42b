package persist

import "strings"

// keySlot is a key's Redis Cluster hash slot: CRC16 (XMODEM) of the key,
// or of its hash tag (the part between the first '{' and the next '}', if
// not empty), modulo 16384.
func keySlot(key string) int {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			key = key[i+1 : i+1+j]
		}
	}
	return int(crc16(key) % 16384)
}

// crossSlot reports whether keys are in more than one hash slot.
func crossSlot(keys []string) bool {
	slot := keySlot(keys[0])
	for _, k := range keys[1:] {
		if keySlot(k) != slot {
			return true
		}
	}
	return false
}

// crc16 is CRC-16/XMODEM, Redis Cluster's key hash.
func crc16(s string) uint16 {
	var crc uint16
	for i := 0; i < len(s); i++ {
		crc ^= uint16(s[i]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc
}
