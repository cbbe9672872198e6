// The UTS tree for the Go peer: the same definition as bench/common/uts_tree.c
// (SHA-1 splittable stream, 20-byte descriptors, child i = SHA-1(parent, i as
// 4 big-endian bytes), the same child-count distributions and the same
// published reference trees), written in Go with the standard library's
// crypto/sha1, since calling the C code through cgo would charge every node
// a cgo call that no Go user would pay. Correctness is checked the same way:
// by the published node counts.

package benchlib

import (
	"crypto/sha1"
	"encoding/binary"
	"flag"
	"math"
)

const (
	UTSBin = iota
	UTSGeo
	UTSHybrid
	UTSBalanced
)

const (
	shapeLinear = iota
	shapeExpDec
	shapeCyclic
	shapeFixed
)

const UTSMaxChildren = 100

type UTSParams struct {
	Type, M, RootSeed, Shape, DepthLimit, Granularity int
	B0, Q, Shift                                      float64
}

type UTSNode struct {
	Type, Height int
	State        [20]byte
}

// UTSFlags registers -t -b -q -m -r -a -d -f -g with the reference defaults.
func UTSFlags() *UTSParams {
	p := &UTSParams{}
	flag.IntVar(&p.Type, "t", UTSGeo, "tree type: 0 binomial, 1 geometric, 2 hybrid, 3 balanced")
	flag.Float64Var(&p.B0, "b", 4.0, "root branching factor (geometric: mean)")
	flag.Float64Var(&p.Q, "q", 15.0/64.0, "binomial: probability of children")
	flag.IntVar(&p.M, "m", 4, "binomial: number of children")
	flag.IntVar(&p.RootSeed, "r", 0, "root seed")
	flag.IntVar(&p.Shape, "a", shapeLinear, "geometric shape")
	flag.IntVar(&p.DepthLimit, "d", 6, "geometric: depth limit")
	flag.Float64Var(&p.Shift, "f", 0.5, "hybrid: switch depth, fraction of -d")
	flag.IntVar(&p.Granularity, "g", 1, "SHA-1 evaluations per child")
	return p
}

type UTSReference struct {
	Name     string
	Nodes    int64
	MaxDepth int
}

// Find the published tree these parameters name (see uts_tree.c).
func (p *UTSParams) Reference() *UTSReference {
	if p.Granularity != 1 {
		return nil
	}
	geo := func(d, r int) bool {
		return p.Type == UTSGeo && p.Shape == shapeFixed && p.DepthLimit == d && p.RootSeed == r && p.B0 == 4
	}
	bin := func(q float64, m, r int) bool {
		return p.Type == UTSBin && p.B0 == 2000 && p.Q == q && p.M == m && p.RootSeed == r
	}
	switch {
	case geo(10, 19):
		return &UTSReference{"T1", 4130071, 10}
	case geo(13, 29):
		return &UTSReference{"T1L", 102181082, 13}
	case bin(0.124875, 8, 42):
		return &UTSReference{"T3", 4112897, 1572}
	case bin(0.200014, 5, 7):
		return &UTSReference{"T3L", 111345631, 17844}
	case geo(8, 19):
		return &UTSReference{"T1d8", 257042, 8}
	}
	return nil
}

// ParamsFields are the output's params object (as the C programs write it).
func (p *UTSParams) ParamsFields() []Field {
	var f []Field
	if r := p.Reference(); r != nil {
		f = append(f, Field{"tree", r.Name})
	}
	f = append(f, Field{"t", p.Type}, Field{"b", p.B0}, Field{"r", p.RootSeed})
	if p.Type == UTSBin || p.Type == UTSHybrid {
		f = append(f, Field{"q", p.Q}, Field{"m", p.M})
	}
	if p.Type != UTSBin {
		f = append(f, Field{"a", p.Shape}, Field{"d", p.DepthLimit})
	}
	if p.Type == UTSHybrid {
		f = append(f, Field{"f", p.Shift})
	}
	if p.Granularity != 1 {
		f = append(f, Field{"g", p.Granularity})
	}
	return f
}

func (p *UTSParams) Root() UTSNode {
	var msg [20]byte
	binary.BigEndian.PutUint32(msg[16:], uint32(p.RootSeed))
	return UTSNode{Type: p.Type, Height: 0, State: sha1.Sum(msg[:])}
}

func uniform(n *UTSNode) float64 {
	b := binary.BigEndian.Uint32(n.State[16:]) & 0x7fffffff
	return float64(b) / 2147483648.0
}

func (p *UTSParams) binomial(n *UTSNode) int {
	if uniform(n) < p.Q {
		return p.M
	}
	return 0
}

func (p *UTSParams) geometric(n *UTSNode) int {
	b := p.B0
	depth := n.Height
	if depth > 0 {
		switch p.Shape {
		case shapeExpDec:
			b = p.B0 * math.Pow(float64(depth), -math.Log(p.B0)/math.Log(float64(p.DepthLimit)))
		case shapeCyclic:
			if depth > 5*p.DepthLimit {
				b = 0
			} else {
				b = math.Pow(p.B0, math.Sin(2.0*3.141592653589793*float64(depth)/float64(p.DepthLimit)))
			}
		case shapeFixed:
			if depth >= p.DepthLimit {
				b = 0
			}
		default:
			b = p.B0 * (1.0 - float64(depth)/float64(p.DepthLimit))
		}
	}
	prob := 1.0 / (1.0 + b)
	u := uniform(n)
	return int(math.Floor(math.Log(1-u) / math.Log(1-prob)))
}

func (p *UTSParams) NumChildren(n *UTSNode) int {
	k := 0
	switch p.Type {
	case UTSBin:
		if n.Height == 0 {
			k = int(math.Floor(p.B0))
		} else {
			k = p.binomial(n)
		}
	case UTSGeo:
		k = p.geometric(n)
	case UTSHybrid:
		if float64(n.Height) < p.Shift*float64(p.DepthLimit) {
			k = p.geometric(n)
		} else {
			k = p.binomial(n)
		}
	case UTSBalanced:
		if n.Height < p.DepthLimit {
			k = int(p.B0)
		}
	}
	if n.Height == 0 && n.Type == UTSBin {
		if rootMax := int(math.Ceil(p.B0)); k > rootMax {
			k = rootMax
		}
	} else if p.Type != UTSBalanced && k > UTSMaxChildren {
		k = UTSMaxChildren
	}
	return k
}

func (p *UTSParams) Child(parent *UTSNode, i int, child *UTSNode) {
	var msg [24]byte
	copy(msg[:20], parent.State[:])
	binary.BigEndian.PutUint32(msg[20:], uint32(i))
	for g := 0; g < p.Granularity; g++ {
		child.State = sha1.Sum(msg[:])
	}
	child.Height = parent.Height + 1
	child.Type = p.Type
	if p.Type == UTSHybrid {
		if float64(child.Height) < p.Shift*float64(p.DepthLimit) {
			child.Type = UTSGeo
		} else {
			child.Type = UTSBin
		}
	}
}
