package keyspace

import "strings"

// Slots is the number of Redis Cluster hash slots.
const Slots = 16384

// HashTag returns the part of name Redis Cluster hashes: the text between
// the first '{' and the first '}' after it when that is not empty, else the
// whole name (Redis Cluster specification, "Hash tags").
func HashTag(name string) string {
	i := strings.IndexByte(name, '{')
	if i < 0 {
		return name
	}
	j := strings.IndexByte(name[i+1:], '}')
	if j <= 0 {
		return name
	}
	return name[i+1 : i+1+j]
}

// Slot returns the Redis Cluster hash slot of name, 0..Slots-1: CRC16
// (XMODEM: polynomial 0x1021, initial value 0) of HashTag(name), modulo
// Slots, as Redis computes it. It does not allocate.
func Slot(name string) int {
	tag := HashTag(name)
	var crc uint16
	for i := 0; i < len(tag); i++ {
		crc = crc<<8 ^ crc16Table[byte(crc>>8)^tag[i]]
	}
	return int(crc) % Slots
}

// crc16Table is the byte-wise table of CRC16/XMODEM.
var crc16Table = func() (t [256]uint16) {
	for i := range t {
		c := uint16(i) << 8
		for range 8 {
			if c&0x8000 != 0 {
				c = c<<1 ^ 0x1021
			} else {
				c <<= 1
			}
		}
		t[i] = c
	}
	return t
}()
