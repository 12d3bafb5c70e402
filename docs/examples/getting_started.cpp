// Getting started in C++: the same schedule through pipesched.hpp.
#include <pipesched.hpp>

#include <iostream>

int main()
{
    try {
        pipesched::Plan plan(4, 8);
        auto s = pipesched::generate(plan, "zb-h1");
        auto r = s.simulate();
        std::cout << "span " << r.span() << "\n";
        for (const psched_op &op : s.ops(3))
            std::cout << op.stage << ' ' << int(op.kind) << ' ' << op.microbatch << '\n';
    } catch (const pipesched::Error &e) {
        std::cerr << e.what() << '\n';
        return 1;
    }
}
